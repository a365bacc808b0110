"""Pure domain model of an RDMA GPU fabric: names, samples, states, rates, rules. No I/O."""
