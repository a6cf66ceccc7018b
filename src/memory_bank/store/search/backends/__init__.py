"""The dialects of memory search: what each database's full-text index needs (``SearchBackend``)."""
