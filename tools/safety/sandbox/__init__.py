"""The sandbox: bubblewrap (or Landlock), what the model sees, the overlay a command writes, the network proxy."""
