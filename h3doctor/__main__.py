from h3doctor.cli import main

main()
