"""Where the model-based check puts the model classes of a run, so that the command line can name them
(``--model tests.model.registry:M0``). Filled and emptied by the machine."""
