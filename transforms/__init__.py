"""numax's interpreters: jit (staging and compiling), and the transformations built on the IR."""
