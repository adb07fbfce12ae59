"""What both backends use alike: batch checks, session context, row conversion, tokens, times."""
