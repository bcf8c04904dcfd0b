from headstart.cli import main

raise SystemExit(main())
