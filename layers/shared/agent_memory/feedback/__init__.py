"""Answer feedback: rate an assistant message, list the ratings, summarise them for the report."""
