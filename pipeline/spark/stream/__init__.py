"""The streaming replay, the product's main job: the query and its micro-batches
(`replay`), each batch's exactly-once writes (`sinks`), its progress lines (`lines`), the
metrics it publishes (`publish`) and the upkeep it runs between batches (`maintain`).
Imports `lag` and below."""
