"""The MCP server: tool wiring (``tools``, ``server``) and its transports (``http``, ``stdio``)."""
