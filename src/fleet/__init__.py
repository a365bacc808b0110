"""fleet: a terminal console for RDMA GPU clusters."""
