from thalos_bot.cli.main import main

raise SystemExit(main())
