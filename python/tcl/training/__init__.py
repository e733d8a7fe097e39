"""Training cost models: ``train.optimize`` is the one loop every trainer runs (``train`` from
scratch, ``distill`` across platforms at constant size, ``transfer`` to a new platform,
``online`` while tuning), with ``losses`` and ``metrics``.
"""
