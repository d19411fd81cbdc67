from hatecheck_pipeline.cli.main import cli

cli()
