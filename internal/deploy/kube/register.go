package kube

import "github.com/svclab/svclab/internal/deploy"

func init() { deploy.Register(Deployer{}) }
