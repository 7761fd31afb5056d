"""Summaries an agent resumes from, on neutral messages: plan, facts, prompt, client, stage."""
