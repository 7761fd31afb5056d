"""What the model sees on resume, in tokens: estimates, model windows, pi's context."""
