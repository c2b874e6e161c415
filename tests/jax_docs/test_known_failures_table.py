"""The README's table of documentation cells that do not run as under jax is known_failures.py's table."""

import os

from known_failures import markdown_table

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")


def test_readme_lists_every_known_failure():
    with open(README) as readme:
        text = readme.read()
    assert markdown_table() in text, "README.md's 'Compatibility with JAX' table is stale: paste in the output of " \
                                     "`python tests/jax_docs/known_failures.py`"
