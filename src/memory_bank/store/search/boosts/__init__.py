"""What lifts or lowers a lexical or fused score after ranking: shared origins, then feedback."""
