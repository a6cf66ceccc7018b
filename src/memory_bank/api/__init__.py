"""The HTTP edge: problem documents, the bearer dependency, body readers, middlewares, operational routes, docs."""
