"""membase: memory layers for LLMs, run over conversation datasets and traced with smartcomment.

Layout:
    membase.types        Message, Session, Trajectory, QuestionAnswerPair, MemoryEntry, MemoryDataset
    membase.datasets     load_locomo (and the DATASET_LOADERS registry)
    membase.clients      ChatClient (OpenAI-compatible, credential pool, retries, cache), embedders, fakes
    membase.layers       MEMORY_LAYERS_MAPPING / CONFIG_MAPPING: Long-Context, NaiveRAG, Mem0, EverMemOS
    membase.runners      construction -> search -> evaluation, one execution graph per user
    membase.evaluation   TokenF1, BLEU, LLM-judge parsing and prompts
    membase.cli          `python -m membase construct|search|evaluate|run`

Importing the package loads nothing heavy: layers, torch and qdrant are imported on first use.
"""
