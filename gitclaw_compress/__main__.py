from gitclaw_compress.cli import main

main()
