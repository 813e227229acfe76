"""`mgtui diff` (mgtui/diff): two runs aligned and their first difference named."""
