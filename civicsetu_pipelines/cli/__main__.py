"""``python -m civicsetu_pipelines.cli``: the ``civicsetu`` command."""

from civicsetu_pipelines.cli import main

if __name__ == "__main__":
    main()
