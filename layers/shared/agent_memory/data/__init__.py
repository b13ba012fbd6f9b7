"""Data access: the only package that imports PynamoDB.

Rows become domain models at this boundary and SDK errors become domain exceptions
(``VersionConflict``, ``ProjectNotFound`` ...); ``botocore`` never leaks upward.
"""
