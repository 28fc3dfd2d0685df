"""Spark Connect clients' DataFrame plans (protobuf), read and rewritten on the client."""
