"""Benchmark tasks: dataset loaders, derived facts, the batch runner."""
