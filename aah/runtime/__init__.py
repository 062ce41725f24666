"""The agent: state, prompts, awareness, graph, session driver, humans."""
