"""Console themes as data (``*.toml``, one per theme) and the shared TCSS (``fleet.tcss``)."""
