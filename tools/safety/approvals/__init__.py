"""The approval gate, the person's rules, remembered answers, and making a prompt's text visible."""
