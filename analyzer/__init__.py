"""Discovery, parsing, name resolution and the repository model.

Nothing in this package imports or runs the scanned code, and nothing here renders output.
"""
