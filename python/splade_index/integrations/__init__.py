"""Hand-offs to other systems: milvus (a collection filled with our vectors, searched with our query
encoder), ray (corpus encoding spread over a Ray cluster). Each imports its client library lazily."""
