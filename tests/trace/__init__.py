"""The trace (mgtui/trace): its queries and builder, the record table, saved files and their readers, arrays in the trace."""
