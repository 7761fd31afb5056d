"""LLM-written summaries that pi resumes from: facts, prompts, the client, the stage."""
