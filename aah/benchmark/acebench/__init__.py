"""ACEBench's Special data (Chen et al. 2025) as a runnable benchmark, under two readings.

``tasks`` loads the items, ``upstream`` is upstream's string scoring,
``runner`` runs them, ``scoring`` reads and stores each reply and reads the
figures back, ``tables`` draws them, ``benchmark`` is the ``Benchmark``.
"""
