module sandbox

go 1.25
