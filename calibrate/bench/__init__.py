"""The bench: PostMark, provisioning storage stacks on the host or in a throwaway VM."""
