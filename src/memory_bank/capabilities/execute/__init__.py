"""Execute a capability: an MCP tool call becomes the REST call, never a second implementation.

``validation`` checks the arguments against the advertised ``inputSchema`` (naming
the argument as the agent sent it, ``api.argument_hints`` saying where a misplaced one
belongs); ``dispatch`` runs the call as an ASGI request into the same app;
``outcome`` is who it acts for and the tool result it ends in.
"""
