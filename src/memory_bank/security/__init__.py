"""Who is calling and what they may do: bearer tokens, principals, rate limits, audit."""
