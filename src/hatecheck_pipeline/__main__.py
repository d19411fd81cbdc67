from hatecheck_pipeline.cli.app import cli

cli()
