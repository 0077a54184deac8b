module github.com/prsaga/prsaga/services/validator

go 1.26

replace (
	github.com/prsaga/prsaga/contracts => ../../contracts
	github.com/prsaga/prsaga/platform => ../../platform
)
