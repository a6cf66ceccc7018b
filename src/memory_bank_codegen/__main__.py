from memory_bank_codegen.cli import run

run()
