"""Who is calling and what they may do: principals, token format and permissions, rate limits,
agent policy. No SQL: the rows these decide on are kept by ``store``."""
