"""The summarize path: prompt, model-driven digest and the network-free digest."""
