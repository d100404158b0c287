{{ registry_table('com.example', 'signup', 1) }}
