module github.com/prsaga/prsaga/contracts

go 1.26

require github.com/cloudevents/sdk-go/v2 v2.16.2

require (
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.2 // indirect
)
