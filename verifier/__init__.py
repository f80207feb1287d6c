"""The PySpark replica-consistency verifier."""
