"""The share coordinator (KIP-932) as a pure replay: each share partition's state as Kafka's
`ShareCoordinatorShard` rebuilds it from `__share_group_state` (`state`). Standard library
only, like `pipeline.fold`."""
