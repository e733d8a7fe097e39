"""Adapters to other systems (TVM). Each imports its heavy dependency lazily."""
