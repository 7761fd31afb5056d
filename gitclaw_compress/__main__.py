from gitclaw_compress.entry import main

main()
