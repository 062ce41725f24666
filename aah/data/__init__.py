"""Where the benchmark data and specs come from: discovery and fetching."""
