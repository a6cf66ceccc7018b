"""Execute a capability: check its arguments against the advertised schema, then run it as a REST call in process."""
