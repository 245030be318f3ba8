"""The jobs: each module parses its command line, builds the Spark session from the packaged
`pipeline/conf`, calls the pipeline and stops. Installed, they are console scripts (`cgr-replay`,
`cgr-backfill`, ...) and `python -m pipeline.jobs.<job>` modules; `jobs/<job>.py` in a
checkout is the same job as a file for `spark-submit`."""
