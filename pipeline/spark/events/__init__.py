"""The event log on its way into the fold: read and checked against the contract
(`eventlog`, `validate`), packed into the narrow pipe the fold reads (`packing`), and raw
`__consumer_offsets` records decoded into log rows (`records`). Imports `tables` and below."""
