from speechperf.cli import main

main()
