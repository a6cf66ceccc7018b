"""The HTTP edge: problem documents, the bearer dependency, body readers (and the hints that say
where a misplaced or misspelt argument belongs, which execute_capability gives too),
middlewares, operational routes, docs."""
