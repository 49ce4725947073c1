from h3doctor.entry import main

main()
