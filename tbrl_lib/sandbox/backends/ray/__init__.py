"""The `ray` backend: sandboxes placed across a Ray cluster's nodes by their `sandbox`
resource, each run on its node's Docker engine by one host actor per node. Ray is the
optional extra `ray`, imported lazily (`cluster.ray_module`)."""
