"""Tuning on a platform (``platforms``): collect measured programs into a store (``collect``,
``active`` for RDU rounds), and tune a user's model into a deployable library (``tune``, with
``user_models``, ``timing`` and ``report``).
"""
